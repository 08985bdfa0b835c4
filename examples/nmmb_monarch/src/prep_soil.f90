! Variable step (per day), 3/4: precipitation and soil moisture on the model
! grid; soil moisture scaled by the soil texture's porosity and wetted by
! vegetation, var_work smoothing passes.
!
!   prep_soil NAMELIST DEGRIB SOILTYPE VEGFRAC OUT
program prep_soil
  use nmmb_io
  implicit none
  real(dp), allocatable :: cp(:, :), cw(:, :), st(:, :), vf(:, :), pr(:, :), sw(:, :), f(:, :)
  integer :: u, o, i, j
  real(dp) :: por
  call need_args(5, 'prep_soil NAMELIST DEGRIB SOILTYPE VEGFRAC OUT')
  call read_namelist(arg(1))
  call open_in(arg(2), u)
  call get_field(u, f, 'u')
  call get_field(u, f, 'v')
  call get_field(u, cp, 'precip')
  call get_field(u, cw, 'soilw')
  close(u)
  call read_one(arg(3), st, 'soiltype')
  call read_one(arg(4), vf, 'vegfrac')
  allocate(pr(nx, ny), sw(nx, ny))
  call interp(cp, pr)
  call interp(cw, sw)
  do j = 1, ny
    do i = 1, nx
      select case (nint(st(i, j)))
      case (1)
        por = 0.40_dp
      case (6)
        por = 0.45_dp
      case (12)
        por = 0.50_dp
      case default
        por = 1.0_dp
      end select
      sw(i, j) = min(por, sw(i, j) * (0.8_dp + 0.4_dp * vf(i, j)) + 0.002_dp * pr(i, j))
    end do
  end do
  call smooth(pr, var_work, 0.1_dp)
  call smooth(sw, var_work, 0.1_dp)
  call open_out(arg(5), o)
  call put_field(o, 'precip', max(0.0_dp, pr))
  call put_field(o, 'soilw', sw)
  close(o)
end program prep_soil
